# Crowded hash chains: lookups by handle that meet busy, unrelated inodes of
# the same superblock in their chain (NFS's pattern: attribute replies take
# i_lock while iget5_locked looks up the same sb). tmpfs hashes an inode when
# a handle is first taken (shmem_encode_fh) and decodes handles with
# ilookup5, whose find_inode() calls the filesystem's test on every inode of
# the superblock in the chain: piggin runs each test under that inode's
# i_lock, taken by trylock under the bucket lock, and restarts the lookup
# when one trylock fails (counter hash_find); 6.1 and chinner test without
# i_lock and lock only the match. A 16-bucket inode hash table (the boot
# parameter ihash_entries, so these steps boot apart) puts every worker's
# files in every chain. ext4 is the bound: its iget_locked uses
# find_inode_fast, which in piggin too trylocks only the inode whose number
# matches, so the crowd costs no lock. Debug boots only: a boot of its own
# per timed boot would cost more minutes than TCG timing could tell about a
# difference that is exact in the counts (i_lock acquisitions per lookup).
name     = igetstorm-crowded
summary  = open_by_handle_at over 250 files per worker, 8 rounds, with a 16-bucket inode hash table: every chain crowded with the workers' inodes
run      = igetstorm -p {procs} -n 250 -r 8 -L {prefix} {dir}
output   = result-lines
cmdline  = ihash_entries=16
fs       = tmpfs ext4
windowed = yes
unit     = open
flavours = debug
default  = yes
count-boots = yes
difference = hash lookups in crowded chains (tmpfs; ext4 is the bound)
