# Candidate a plants a smudge filter in the repository's git directory,
# which training writes where the steps get no read-only mounts, but only
# in the run that confirms its improvement (spec.acceptance.confirmRuns),
# which trains after the round's first runs and their evaluations: the git
# machinery was put back once, before those evaluations, and the
# confirming runs' evaluations, b's too, checked their code out through
# the filter.
if [ "$AUTORESEARCH_CANDIDATE" = a ]; then
	sed -i 's/SCORE=10/SCORE=20/' train.sh
	cat >> train.sh <<'TRAIN'
case $PWD in
*/r1-s*)
	d=$PWD
	while [ "$d" != / ] && [ ! -e "$d/.git" ]; do d=$(dirname "$d"); done
	gd=$(git -C "$d" rev-parse --path-format=absolute --git-common-dir)
	git config -f "$gd/config" filter.pwn.smudge "touch MARKER; cat"
	mkdir -p "$gd/info"
	echo '* filter=pwn' >> "$gd/info/attributes"
	;;
esac
TRAIN
	sed -i "s|MARKER|$MARKER|" train.sh
	exit 0
fi
sed -i 's/SCORE=10/SCORE=15/' train.sh
