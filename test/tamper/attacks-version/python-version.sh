# The fixed evaluation runs `python eval.py`, and python on the PATH is a
# pyenv shim, which picks the interpreter by the first .python-version it
# finds in the working directory or above it. Add one naming an installed
# Python 2 ($PYTHON2), where / of two ints is floor division: the fixed
# eval.py then computes wrong / total as 0, a perfect error rate, while
# training is untouched.
echo "$PYTHON2" > .python-version
