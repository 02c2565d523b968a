# Training code that leaves its output as a symbolic link out of its
# checkout, hoping the evaluation's checkout gets whatever file it names,
# or that the supervisor chokes on it and the experiment stops.
forged=$(dirname "$MARKER")/forged-score
echo 99 > "$forged"
sed -i '/^SCORE=10$/,$d' train.sh
cat >> train.sh <<TRAIN
ln -s "$forged" out.txt
TRAIN
