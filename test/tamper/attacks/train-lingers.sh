# Have training leave a process in a session of its own that outlives its
# step: once training is over it touches the marker and, over and over,
# writes a better score into the output that the evaluation is given. Only
# if it outlived its step (its pod) does the evaluation read 99; its
# marker says so too, where the test can see it.
cat >> train.sh <<TRAIN
(setsid sh -c '
	sleep 2
	touch "$MARKER"
	for i in \$(seq 300); do echo 99 > out.txt; sleep 0.1; done
' </dev/null >/dev/null 2>&1 &)
sleep 0.2
TRAIN
