package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"
)

func newInstallCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "install DIR",
		Short: "Copy this binary into DIR, as the init container that brings the step wrapper into a user's image does",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			self, err := os.Executable()
			if err != nil {
				return err
			}
			src, err := os.Open(self)
			if err != nil {
				return err
			}
			defer src.Close()
			dst := filepath.Join(args[0], "autoresearch")
			out, err := os.OpenFile(dst, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o755)
			if err != nil {
				return err
			}
			if _, err := io.Copy(out, src); err != nil {
				return errors.Join(err, out.Close())
			}
			if err := out.Close(); err != nil {
				return err
			}
			fmt.Fprintln(cmd.OutOrStdout(), "installed", dst)
			return nil
		},
	}
}
