# Leave a path with a .git component in another case, which git add
# refuses as an invalid path, and with it the whole seal: the run failed.
mkdir -p notes/.GIT
echo x > notes/.GIT/readme
sed -i s/SCORE=10/SCORE=20/ train.sh
