# manual boot
echo 'inode-duel: plan of 4 steps'
run_step s01 ext4 /dev/vda 120 lines 2 'stress-ng --dentry 2 --timeout 10s --metrics-brief --temp-path /mnt/work/.tmp' 'dispatching hogs' 'bogo ops real time'
# stress-dentry/ext4/p2
run_step s02 ext4 /dev/vda 300 lines 2 'dbench -t 4 -D /mnt/work 2' 'releasing clients' cleanup
# dbench/ext4/p2
run_step s03 ext4 /dev/vda 900 program 2 'sh /workloads/fsmark/gate.sh 2 1000 0 /mnt/work/fsmark'
# fsmark-0b/ext4/p2
run_step s04 ext4 /dev/vda 120 lines 2 'stress-ng --inode-flags 2 --timeout 10s --metrics-brief --temp-path /mnt/work/.tmp' 'dispatching hogs' 'bogo ops real time'
# stress-inode-flags/ext4/p2
finish
