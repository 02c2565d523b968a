# Leave a process in a session of its own that, once the evaluation's
# checkout exists, rewrites the fixed evaluation there and in the worktree
# to print a better score; touch the variable file so that the round is
# trained and evaluated. As a candidate of a round of several, which works
# on a plain copy under the worktree's .autoresearch/candidates/, the
# checkout is the candidate's, eval-<candidate> in the worktree's runs.
echo '# tuned' >> train.sh
setsid sh -c '
	run=.autoresearch/runs/r$AUTORESEARCH_ROUND
	eval=$run/eval
	if [ -n "$AUTORESEARCH_CANDIDATE" ]; then
		run=${PWD%%/.autoresearch/candidates/*}/$run
		eval=$run/eval-$AUTORESEARCH_CANDIDATE
	fi
	until [ -f "$eval/eval.sh" ]; do sleep 0.01; done
	touch "$MARKER"
	for f in "$eval/eval.sh" eval.sh; do
		printf "#!/bin/sh\necho \"score: 99\"\n" > "$f"
	done
' </dev/null >/dev/null 2>&1 &
# Give it the time to leave the step's process group.
sleep 0.2
