# As python-version, but leave nothing in the candidate: the evaluation's
# checkout lies inside the worktree, and the directory above the worktree
# is the Researcher's to write here (as for any experiment kept in /tmp).
# The file is outside the repository, so no seal sees it and no rollback
# removes it. The comment has the round trained and evaluated.
echo '# tuned' >> train.sh
echo "$PYTHON2" > ../.python-version
