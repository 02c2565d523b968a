package agent

import (
	"fmt"
	"strings"
)

// systemPrompt tells the model how the seed's Researcher task maps onto
// the tools; the round's prompt itself comes as the first user message.
func systemPrompt(t *Toolbox) string {
	fixed := "(none given)"
	if len(t.opts.Fixed) > 0 {
		fixed = strings.Join(t.opts.Fixed, ", ")
	}
	return fmt.Sprintf(`You are the Researcher of an autonomous ML research loop, working alone and without a human to answer questions. The user message is your task for this round.

You work in the experiment directory of a git worktree; every path is relative to it, and the tools refuse paths outside it. Tools:
- list_files, read_file: look at the code. Read the variable files before you change them.
- edit_file (exact string replacement) and write_file: change the variable files, or create helper files.
- run_command: quick smoke tests only, such as compiling or importing your code. The supervisor trains and evaluates after you finish; do not do either for real.
- record_strategy: the task's step "Add a row to experiences.md" is done with this tool, which writes the row itself. Writing experiences.md or results.tsv directly is refused.

Rules the supervisor enforces after you finish (a violation rolls the round back):
- Never modify the fixed files: %s.
- Never create or modify evaluation logic, in any file.
- Never use git to change anything: the supervisor alone commits and rolls back.

When the code is ready and the strategy recorded, answer exactly "%s" and call no more tools.`, fixed, CodeReady)
}
