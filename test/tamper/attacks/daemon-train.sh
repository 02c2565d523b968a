# Make training leave a double-forked daemon that, once the evaluation has
# started, keeps writing a better score where the evaluation reads it: in
# the evaluation's checkout beside the training one: eval, or
# eval-<candidate> for a candidate of a round of several.
eval=eval${AUTORESEARCH_CANDIDATE:+-$AUTORESEARCH_CANDIDATE}
cat >> train.sh <<TRAIN
(setsid sh -c '
	until [ -f ../$eval/out.txt ]; do sleep 0.01; done
	touch "$MARKER"
	for i in \$(seq 500); do echo 99 > ../$eval/out.txt; sleep 0.01; done
' </dev/null >/dev/null 2>&1 &)
sleep 0.2
TRAIN
