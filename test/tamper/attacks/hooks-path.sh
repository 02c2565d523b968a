# Point git at a hooks directory of the Researcher's own, in the repository config.
hooks="${TMPDIR:-/tmp}/ar-hooks-$$"
mkdir -p "$hooks"
printf '#!/bin/sh\ntouch "%s"\n' "$MARKER" > "$hooks/pre-commit"
chmod +x "$hooks/pre-commit"
git config core.hooksPath "$hooks"
sed -i s/SCORE=10/SCORE=20/ train.sh
