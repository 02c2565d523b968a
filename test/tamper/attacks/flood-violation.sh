# Add thirty files with long names to a fixed directory, so that the
# compliance message naming them outgrows what the experiment's status may
# hold: a status the API refuses would stop the experiment at this round.
for i in $(seq 30); do
	echo 99 > "golden/override-$i-$(printf '%060d' 0).txt"
done
sed -i s/SCORE=10/SCORE=11/ train.sh
