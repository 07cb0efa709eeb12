# manual boot
echo 'inode-duel: plan of 1 steps'
run_step s01 ext4 /dev/vda 900 program 8 'syncrace -p 8 -n 64 -t 600 -D -d /dev/vda -c /tmp -L /run/inode-duel/s01 /mnt/work'
# syncrace/ext4/p8
finish
