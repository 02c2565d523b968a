# Leave an empty nested repository: git add refuses a repository without a
# commit, and with it the whole seal, which failed the run.
mkdir sub
git -C sub init -q
sed -i s/SCORE=10/SCORE=20/ train.sh
