# A run line with everything that used to act on the harness's own step
# command: a redirection, a pipe, ';', '#' inside quotes, braces, and a
# write to $TMPDIR, which must be on the filesystem under test.
name    = shell-line
summary = redirections, pipes and a '#' inside one run line, contained in its step
run     = echo 'result phase=line ops=7 elapsed_ns=1000 procs={procs}' > {tmp}/r; cat {tmp}/r | grep result; echo 'kept # not a comment' >&2; stat -f -c '%T' "$TMPDIR" >&2; awk '{ print "braces", $2 }' {tmp}/r >&2
output  = result-lines
fs      = ext4
procs   = 1
timeout = 60
