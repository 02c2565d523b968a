# Leave a tag in the user's repository.
git update-ref refs/tags/v-forged HEAD
sed -i s/SCORE=10/SCORE=20/ train.sh
