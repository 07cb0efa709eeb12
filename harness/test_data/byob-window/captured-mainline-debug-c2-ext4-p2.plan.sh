# manual boot
echo 'inode-duel: plan of 5 steps'
run_step s01 ext4 /dev/vda 300 harness 2 'fsstress -d /mnt/work/fsstress -n 500 -p 2 -s 1 -f fsync=0 -f fdatasync=0 -f sync=0'
# fsstress/ext4/p2
run_step s02 ext4 /dev/vda 120 lines 2 'open1_processes -t 2 -s 3 -n' measurement average
# wis-open1/ext4/p2
run_step s03 ext4 /dev/vda 120 lines 2 'unlink1_processes -t 2 -s 3 -n' measurement average
# wis-unlink1/ext4/p2
run_step s04 ext4 /dev/vda 240 lines 2 'stress-ng --dentry 2 --dentry-ops $((2048 * 2)) --timeout 200s --metrics-brief --temp-path /mnt/work/.tmp' 'dispatching hogs' 'bogo ops real time'
# stress-dentry/ext4/p2
run_step s05 ext4 /dev/vda 300 lines 2 'dbench -t 4 -D /mnt/work 2' 'releasing clients' cleanup
# dbench/ext4/p2
finish
