# The same filter, attached through info/attributes, which no diff shows.
git config filter.pwn.clean "touch $MARKER; cat"
common=$(git rev-parse --path-format=absolute --git-common-dir)
mkdir -p "$common/info"
echo '* filter=pwn' > "$common/info/attributes"
sed -i s/SCORE=10/SCORE=20/ train.sh
