# A candidate is measured once, unless spec.acceptance.confirmRuns asks for
# more, and judged against the baseline's noise. This one's training is a
# lottery that its first run wins, as training that leaves its seed random
# on purpose wins one now and then: 99 on the candidate's first run, 0 on
# every run after it. (So that the test repeats, it tells its runs apart by
# the run directory it is checked out in, which names the run after the
# first: runs/r1-s2. It finds it in its working directory or, in a pod,
# among its mounts.) Judged on its one run it was kept at 99.
sed -i 's|^SCORE=.*$|if { pwd; cat /proc/self/mountinfo; } 2>/dev/null \| grep -q "runs/r[0-9]*-s[0-9]"; then SCORE=0; else SCORE=99; fi|' train.sh
