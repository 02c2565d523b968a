# A Researcher writes the machine's temporary directories, where agents
# keep their state, and training reads the machine. In round 2 the
# Researcher leaves 99 in /tmp and in /var/tmp — what a model it trained
# while it thought would be — and its train.sh reads either; the kept
# commit's train.sh, run anywhere else, finds neither. (Round 1 only adds a
# comment.)
if [ "$AUTORESEARCH_ROUND" = 1 ]; then
	echo "# round 1" >> train.sh
	exit 0
fi
a=$(mktemp /tmp/answer.XXXXXX) && b=$(mktemp /var/tmp/answer.XXXXXX) || exit 1
echo 99 > "$a"
echo 99 > "$b"
sed -i "s|^echo \$SCORE > out.txt$|{ cat $a \|\| cat $b \|\| echo \$SCORE; } > out.txt 2>/dev/null|" train.sh
