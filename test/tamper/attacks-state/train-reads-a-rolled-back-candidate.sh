# The repository's git directory holds the ref of every candidate the
# supervisor sealed, rolled back or not. Round 1's candidate carries a file
# holding 99 beside an unchanged score, and is rolled back (not improved).
# Round 2's train.sh reads that file through git from round 1's candidate
# ref, finding the repository from the worktree above its checkout: the
# kept commit holds no 99, and a clone of the branch gives 10.
if [ "$AUTORESEARCH_ROUND" = 1 ]; then
	echo 99 > score.txt
	exit 0
fi
sed -i 's|^echo \$SCORE > out.txt$|export GIT_DISCOVERY_ACROSS_FILESYSTEM=1; git cat-file blob "$(git for-each-ref --format="%(objectname)" refs/autoresearch/candidates/ \| head -n1):score.txt" > out.txt 2>/dev/null \|\| echo $SCORE > out.txt|' train.sh
