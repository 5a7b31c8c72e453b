package main

import (
	"context"
	"fmt"
	"net/url"
	"strings"

	veena "github.com/veena-wf/veena"
)

// Ids on the command line may be shortened: any start of a process id that
// only one process has stands for it, and a node token id is its process
// id (or the start of one) with ".n" and the token's number.

// resolveProcess finds the one process whose id starts with arg.
func resolveProcess(ctx context.Context, c *client, arg string) (string, error) {
	if arg == "" {
		return "", fmt.Errorf("veena: a process id is needed")
	}
	var page veena.ProcessPage
	q := url.Values{"id": {arg}, "limit": {"6"}, "total": {"false"}, "order": {"oldest"}}
	if err := c.getJSON(ctx, "/api/v1/processes", q, &page); err != nil {
		return "", err
	}
	var exact bool
	for _, p := range page.Items {
		exact = exact || p.ID == arg
	}
	switch {
	case exact:
		return arg, nil
	case len(page.Items) == 1:
		return page.Items[0].ID, nil
	case len(page.Items) == 0:
		return "", fmt.Errorf("veena: no process id starts with %q (not_found)", arg)
	}
	ids := make([]string, 0, len(page.Items))
	for i, p := range page.Items {
		if i == 5 {
			ids = append(ids, "…")
			break
		}
		ids = append(ids, p.ID)
	}
	return "", fmt.Errorf("veena: %q is the start of more than one process id; give more of it:\n  %s", arg, strings.Join(ids, "\n  "))
}

// resolveToken turns a node token id, whose process part may be shortened,
// into the full id.
func resolveToken(ctx context.Context, c *client, arg string) (string, error) {
	i := strings.LastIndex(arg, ".n")
	if i <= 0 || i+2 == len(arg) {
		return "", fmt.Errorf("veena: %q is not a node token id: want PROCESS.nN (the process id, or the start of it, then .n and the token's number)", arg)
	}
	pid, err := resolveProcess(ctx, c, arg[:i])
	if err != nil {
		return "", err
	}
	return pid + arg[i:], nil
}
