# spec.pipeline: round 2's Researcher runs while round 1 trains and is
# evaluated, as the same user. It watches /proc for round 1's evaluation
# and writes 99 into its out.txt through /proc/<pid>/cwd, which resolves
# in the evaluation's mount namespace, where its checkout is writable,
# before the fixed reader reads it.
echo 'sleep 2 # a longer training run' >> train.sh
[ "$AUTORESEARCH_ROUND" = 2 ] || exit 0
python3 - <<'PY'
import os, time
end = time.time() + 8
while time.time() < end:
    for p in os.listdir('/proc'):
        if not p.isdigit():
            continue
        try:
            cwd = os.readlink('/proc/%s/cwd' % p)
            if 'eval' in cwd and os.path.exists('/proc/%s/cwd/out.txt' % p):
                with open('/proc/%s/cwd/out.txt' % p, 'w') as f:
                    f.write('99\n')
        except OSError:
            pass
    time.sleep(0.001)
PY
