# Train longer than the fixed region of the variable file allows.
sed -i s/STEPS=100/STEPS=100000/ train.sh
sed -i s/SCORE=10/SCORE=11/ train.sh
