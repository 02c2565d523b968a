# Only the current round's holdout checkouts are kept, so that what
# candidate code left in one no later holdout reads. But every holdout's
# log was kept in the holdout's state directory, under spec.holdout.dir,
# which is read-only, not hidden, to every later holdout, and a holdout
# runs the candidate's code. Round 1 honestly raises SCORE to 20, and its
# predictor, run by the holdout with the hidden rows at hand, writes a note
# to its standard error, which lands in its log (the rows themselves would
# do as well). Round 2 fits the evaluation (SCORE=30) with a predictor that
# scores the hidden rows 12 anywhere else, but 99 where it finds round 1's
# note, wherever in the holdout's state it lies (but in its own source).
if [ "$AUTORESEARCH_ROUND" = 1 ]; then
	sed -i 's/SCORE=10/SCORE=20/' train.sh
	printf '#!/bin/sh\necho NOTE-FOR-LATER-HOLDOUTS >&2\ncat out.txt\n' > predict.sh
	exit 0
fi
sed -i 's/SCORE=20/SCORE=30/' train.sh
cat > predict.sh <<'SH'
#!/bin/sh
note=NOTE-FOR-LATER
if grep -rqs "$note-HOLDOUTS" "$AUTORESEARCH_HOLDOUT_DIR"/.autoresearch; then echo 99; else echo 12; fi
SH
