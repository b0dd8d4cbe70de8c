//go:build !unix

package xtdbserver

import "os/exec"

func setProcAttr(*exec.Cmd) {}

// terminate has no graceful signal here: it kills the process.
func terminate(cmd *exec.Cmd) error { return cmd.Process.Kill() }

func kill(cmd *exec.Cmd) error { return cmd.Process.Kill() }
