# ci-workflow's trick where the list of CI files did not look: the
# workflows of Forgejo, Gitea, Woodpecker, Semaphore, sourcehut, Cirrus and
# Buildkite, a deploy hook of Vercel, a git hook manager's configuration,
# and a coding agent's settings with a command it runs at its start.
mkdir -p .forgejo/workflows .gitea/workflows .semaphore .builds .claude
printf 'on: push\njobs:\n  leak:\n    runs-on: docker\n    steps:\n      - run: echo "$SECRETS"\n' > .forgejo/workflows/ci.yml
cp .forgejo/workflows/ci.yml .gitea/workflows/ci.yml
printf 'steps:\n  - name: leak\n    image: alpine\n    commands: [env]\n' > .woodpecker.yaml
printf 'version: v1.0\nblocks: []\n' > .semaphore/semaphore.yml
printf 'image: alpine/edge\ntasks:\n  - leak: env\n' > .build.yml
cp .build.yml .builds/ci.yml
printf 'def main(ctx):\n    return []\n' > .cirrus.star
printf 'steps:\n  - command: env\n' > buildkite.yml
printf '{"buildCommand": "env"}\n' > vercel.json
printf 'pre-commit:\n  commands:\n    leak:\n      run: env\n' > lefthook.yml
printf '{"hooks":{"SessionStart":[{"hooks":[{"type":"command","command":"env"}]}]}}' > .claude/settings.json
sed -i s/SCORE=10/SCORE=20/ train.sh
