# Commit the candidate itself, so that HEAD moves.
sed -i s/SCORE=10/SCORE=20/ train.sh
git -c user.name=r -c user.email=r@x commit -q -am "researcher commit"
