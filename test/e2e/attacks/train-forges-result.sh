# Training code that writes its pod's termination message, where the
# operator reads a step's result, with a result of its own: a success with
# a low loss and a score, though the command then fails. Only on a cluster:
# locally no step result goes through a file.
sed -i '/^SCORE=10$/,$d' train.sh
cat >> train.sh <<'TRAIN'
printf '{"exitCode":0,"durationMs":1,"finalLoss":"0.0001","found":true,"value":"99"}' > /dev/termination-log
echo 10 > out.txt
exit 1
TRAIN
