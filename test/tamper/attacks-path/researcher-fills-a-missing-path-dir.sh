# A directory on the PATH, before the interpreter's, that does not exist
# ($ABSENT): the Researcher makes it and puts there a python3 that prints
# the metric the evaluation would.
mkdir -p "$ABSENT" && printf '#!/bin/sh\necho "score: 99"\n' > "$ABSENT/python3" && chmod +x "$ABSENT/python3"
echo '# tuned' >> train.sh
