# Make training leave a double-forked daemon that, once the evaluation has
# started, keeps writing a better score where the evaluation reads it.
cat >> train.sh <<TRAIN
(setsid sh -c '
	until [ -f .autoresearch/round-\$AUTORESEARCH_ROUND/eval.log ]; do sleep 0.01; done
	touch "$MARKER"
	for i in \$(seq 500); do echo 99 > out.txt; sleep 0.01; done
' </dev/null >/dev/null 2>&1 &)
sleep 0.2
TRAIN
