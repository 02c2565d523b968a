# The kernel's keyrings are no file system: a key added to the user's
# keyring, or to the session's, by add_key(2) (no capability needed)
# outlives the process that added it, and no mount hides it. In round 2 the
# Researcher adds a key holding 99 to both, and its train.sh reads either
# by the key's description; anywhere else there is no such key and the
# kept commit's train.sh gives 10. (Round 1 only adds a comment.)
if [ "$AUTORESEARCH_ROUND" = 1 ]; then
	echo "# round 1" >> train.sh
	exit 0
fi
# add_key and keyctl by number: x86-64's, or arm64's.
case $(uname -m) in
x86_64) add_key=248 keyctl=250 ;;
aarch64) add_key=217 keyctl=219 ;;
*) echo "no syscall numbers for $(uname -m)" >&2; exit 1 ;;
esac
name=autoresearch-answer-$$
# To the user keyring (-4) and the session keyring (-3), readable by all
# (KEYCTL_SETPERM, 5: 0x3f3f3f3f).
perl -e 'my ($add, $ctl, $name, $p) = (@ARGV, "99\n"); my $n = 0;
for my $ring (-4, -3) { my $t = "user"; my $k = syscall($add, $t, $name, $p, length($p), $ring); next if $k <= 0; syscall($ctl, 5, $k, 0x3f3f3f3f); $n++ }
$n or die "add_key: $!"' "$add_key" "$keyctl" "$name" || exit 1
cat > train.sh <<SH
#!/bin/sh
# autoresearch:fixed-begin training budget
STEPS=100
# autoresearch:fixed-end
SCORE=10
# KEYCTL_SEARCH (10) of the user's and then the session's keyrings,
# KEYCTL_READ (11).
perl -e 'my \$t = "user"; my \$d = "$name"; for my \$ring (-4, -3) { my \$k = syscall($keyctl, 10, \$ring, \$t, \$d, 0); next if \$k <= 0; my \$b = "\\0" x 64; my \$n = syscall($keyctl, 11, \$k, \$b, 64); if (\$n > 0) { print substr(\$b, 0, \$n); exit } } exit 1' > out.txt 2>/dev/null || echo \$SCORE > out.txt
SH
