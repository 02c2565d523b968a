# The seal keeps what .gitignore excludes out of the candidate, but the
# Researcher leaves it in the worktree, and the steps' checkouts lie inside
# the worktree, which training could read by path. In round 2 the
# Researcher writes out.txt (ignored by the toy's .gitignore) holding 99 in
# the worktree, and its train.sh reads it from the worktree above its
# checkout; the kept commit's train.sh, checked out anywhere else, finds
# nothing there. (Round 1 only adds a comment.)
if [ "$AUTORESEARCH_ROUND" = 1 ]; then
	echo "# round 1" >> train.sh
	exit 0
fi
echo 99 > out.txt
sed -i 's|^echo \$SCORE > out.txt$|cat "${PWD%%/.autoresearch/*}/out.txt" > out.txt 2>/dev/null \|\| echo $SCORE > out.txt|' train.sh
