package main

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/autoresearch-dev/autoresearch-operator/api/v1alpha1"
	"github.com/autoresearch-dev/autoresearch-operator/internal/report"
)

// The bounds of spec.guidance, as the CRD has them.
const (
	maxNotes     = 100
	maxNoteBytes = 2048
)

// experiment gets the experiment name, saying how to find the right one
// when there is none of that name.
func (c *cluster) experiment(ctx context.Context, name string) (*v1alpha1.AutoResearch, error) {
	if err := c.connect(); err != nil {
		return nil, err
	}
	ar := &v1alpha1.AutoResearch{}
	err := c.client.Get(ctx, client.ObjectKey{Namespace: c.namespace, Name: name}, ar)
	if apierrors.IsNotFound(err) {
		return nil, fmt.Errorf("experiment %s not found in namespace %s: list them with `kubectl get autoresearch -n %s`, or name the namespace with -n", name, c.namespace, c.namespace)
	}
	return ar, err
}

func newStatusCommand(c *cluster) *cobra.Command {
	var output string
	cmd := &cobra.Command{
		Use:   "status NAME [-o json|yaml]",
		Short: "Print the experiment's state: phase, round, best, and the recent rounds as a table",
		Args:  exactlyName,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := report.CheckOutput(output); err != nil {
				return err
			}
			ar, err := c.experiment(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			out, err := report.StatusOutput(&ar.Status, output, func() string { return statusText(ar) })
			if err != nil {
				return err
			}
			_, err = cmd.OutOrStdout().Write(out)
			return err
		},
	}
	cmd.Flags().StringVarP(&output, "output", "o", "", "print the status object as json or yaml instead of the table")
	return cmd
}

// statusText is the local status table, with the status history as its
// rounds: the whole ledger is on the workspace volume, in the report.
func statusText(ar *v1alpha1.AutoResearch) string {
	where := "none yet"
	if ws := ar.Status.Workspace; ws != nil && ws.ClaimName != "" {
		where = "claim " + ws.ClaimName
	}
	v := report.StatusView{
		Name: ar.Name, WhereLabel: "Workspace", Where: where,
		Spec: ar.Spec, Status: ar.Status, Rows: report.HistoryRows(ar.Spec, ar.Status),
	}
	if h := ar.Status.History; len(h) > 0 && h[0].Round > 0 {
		v.Footer = fmt.Sprintf("Rounds before %d are in the ledger: kubectl autoresearch report %s", h[0].Round, ar.Name)
	}
	return report.StatusText(v)
}

func newNoteCommand(c *cluster) *cobra.Command {
	cmd := &cobra.Command{
		Use:   `note NAME "try a cosine schedule"`,
		Short: "Add guidance for the next Researcher (spec.guidance); the round that sees it records it in its Note column",
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) < 2 || strings.TrimSpace(strings.Join(args[1:], " ")) == "" {
				return fmt.Errorf("give the experiment and the note's text\nUsage: kubectl autoresearch %s", cmd.Use)
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			note := strings.TrimSpace(strings.Join(args[1:], " "))
			if len(note) > maxNoteBytes {
				return fmt.Errorf("the note has %d bytes; a note holds at most %d", len(note), maxNoteBytes)
			}
			var n int
			err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
				ar, err := c.experiment(cmd.Context(), args[0])
				if err != nil {
					return err
				}
				if len(ar.Spec.Guidance) >= maxNotes {
					return fmt.Errorf("%s holds %d guidance notes, the most it can: remove old ones from spec.guidance with `kubectl edit autoresearch %s`", ar.Name, maxNotes, ar.Name)
				}
				// The lock on the resource version keeps a note that
				// someone else adds meanwhile.
				patch := client.MergeFromWithOptions(ar.DeepCopy(), client.MergeFromWithOptimisticLock{})
				ar.Spec.Guidance = append(ar.Spec.Guidance, note)
				n = len(ar.Spec.Guidance)
				return c.client.Patch(cmd.Context(), ar, patch)
			})
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "Noted as guidance %d of %s; the next round's Researcher will see it.\n", n, args[0])
			return nil
		},
	}
	return cmd
}

func newSuspendCommand(c *cluster, suspend bool) *cobra.Command {
	use, short := "suspend NAME", "Pause the experiment: the running step finishes, no new one starts"
	if !suspend {
		use, short = "resume NAME", "Go on with a suspended experiment"
	}
	return &cobra.Command{
		Use:   use,
		Short: short,
		Args:  exactlyName,
		RunE: func(cmd *cobra.Command, args []string) error {
			ar, err := c.experiment(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			if ptr.Deref(ar.Spec.Suspend, false) == suspend {
				state := "is not suspended"
				if suspend {
					state = "is suspended already"
				}
				fmt.Fprintf(cmd.OutOrStdout(), "%s %s (phase %s).\n", ar.Name, state, ar.Status.Phase)
				return nil
			}
			patch := client.MergeFrom(ar.DeepCopy())
			ar.Spec.Suspend = ptr.To(suspend)
			if err := c.client.Patch(cmd.Context(), ar, patch); err != nil {
				return err
			}
			if suspend {
				fmt.Fprintf(cmd.OutOrStdout(), "Suspended %s: the running step finishes and no new one starts. Go on with `kubectl autoresearch resume %s`.\n", ar.Name, ar.Name)
			} else {
				fmt.Fprintf(cmd.OutOrStdout(), "Resumed %s.\n", ar.Name)
			}
			return nil
		},
	}
}

// exactlyName accepts one argument, the experiment's name.
func exactlyName(cmd *cobra.Command, args []string) error {
	if len(args) != 1 {
		return errors.New("give the experiment's name\nUsage: kubectl autoresearch " + cmd.Use)
	}
	return nil
}
