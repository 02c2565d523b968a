# A .gitmodules pointing at a repository of the Researcher's choice.
printf '[submodule "x"]\n\tpath = x\n\turl = /tmp/nowhere\n' > .gitmodules
sed -i s/SCORE=10/SCORE=20/ train.sh
