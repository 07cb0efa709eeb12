# faults test
echo 'inode-duel: plan of 3 steps'
faults_arm none 5 40 0 0 0 0 task
run_step s01 tmpfs none 300 program 2 'createunlink -p 2 -n 2000 -L /tmp/s01 /mnt/work'
faults_save s01
# 'create-unlink/tmpfs/p2 [slab 5%x40, page off, block off]'
faults_arm /dev/vda 2 20 0 0 5 10 task
run_step s02 ext4 /dev/vda 300 program 2 'nsmix -p 2 -t 10 -D -L /tmp/s02 /mnt/work'
faults_save s02
# 'nsmix/ext4/p2 [slab 2%x20, page off, block 5%x10 task]'
faults_arm /dev/vdb 1 20 2 10 2 10 disk
run_step s03 xfs /dev/vdb 300 program 2 'fstree -p 2 -n 2000 -f 500 -D -L /tmp/s03 /mnt/work'
faults_save s03
# 'fstree/xfs/p2 [slab 1%x20, page 2%x10, block 2%x10 disk]'
finish
