# A new file in a fixed directory: the evaluation's inputs grow.
echo 99 > golden/override.txt
sed -i s/SCORE=10/SCORE=11/ train.sh
