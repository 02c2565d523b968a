# Every holdout's log is hidden from the holdouts after it, but the
# holdout's state file, holdout.json in spec.holdout.dir's
# .autoresearch/<name>, keeps every holdout's value as its predictor
# printed it, and was read-only, not hidden, to every later holdout.
# Round 1 honestly raises SCORE to 20; its predictor, run by the holdout,
# prints 20.4242: the digits are the note (the hidden rows would do as
# well). Round 2 fits the evaluation (SCORE=30) with a predictor that
# scores the hidden rows 12 anywhere else, but 99 where it finds round 1's
# note in the holdout's state (but in its own source).
if [ "$AUTORESEARCH_ROUND" = 1 ]; then
	sed -i 's/SCORE=10/SCORE=20/' train.sh
	printf '#!/bin/sh\necho 20.4242\n' > predict.sh
	exit 0
fi
sed -i 's/SCORE=20/SCORE=30/' train.sh
cat > predict.sh <<'SH'
#!/bin/sh
note=4242
if grep -rqs "\"20.$note\"" "$AUTORESEARCH_HOLDOUT_DIR"/.autoresearch; then echo 99; else echo 12; fi
SH
