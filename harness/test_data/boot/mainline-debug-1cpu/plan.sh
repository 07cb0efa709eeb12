# captured for harness/test_data/boot
echo 'inode-duel: plan of 4 steps'
run_step s01 tmpfs none 300 1 createunlink -p 1 -n 2000 -L /tmp/s01 /mnt/work
# create-unlink/tmpfs/p1
run_step s02 ext4 /dev/vda 300 1 createunlink -p 1 -n 2000 -L /tmp/s02 /mnt/work
# create-unlink/ext4/p1
run_step s03 tmpfs none 3 0 sh -c 'sleep 600 & sleep 600'
# overrun/tmpfs/p1
run_step s04 tmpfs none 30 0 sh -c 'echo no such thing >&2; exit 3'
# fails/tmpfs/p1
finish
