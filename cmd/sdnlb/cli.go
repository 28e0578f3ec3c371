package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/sdnlb/sdnlb"
)

// Exit codes of the client commands, for scripts.
const (
	exitOK       = 0
	exitAPIError = 1 // the API answered with an error; its message is printed
	exitUsage    = 2 // bad command line
	exitNoServer = 3 // the API could not be reached
	// diff exits exitDiffers when applying the file would change something,
	// so an error the API answers it with exits exitDiffAPIError instead.
	exitDiffers      = 1
	exitDiffAPIError = 4
)

// cliCommands are the subcommands that talk to a running sdnlb's API.
var cliCommands = []string{"get", "describe", "drain", "undrain", "watch", "apply", "diff", "completion"}

// cliUsage is what a client command's -h prints.
const cliUsage = `Usage: sdnlb [FLAGS] COMMAND [ARGUMENTS] [FLAGS]: commands that talk to a running sdnlb's API

  get vips|pools|members|monitors     list them (-o table, json or yaml)
  get config                          the whole configuration as a document (YAML; -o json)
  describe pool POOL                  a pool, its members' health and live counters
  drain MEMBER, undrain MEMBER        no new connections to the member, or again
  watch pool POOL                     the pool's stats stream as a live table
  apply -f FILE [--prune] [--dry-run] converge to the configuration FILE declares (JSON or YAML,
                                      by extension or content; - reads stdin); --prune also deletes
                                      what FILE does not list; prints what changed
  diff -f FILE [--prune]              what apply would change, changing nothing
  completion bash                     bash completion: source <(sdnlb completion bash)

Flags: --server URL (SDNLB_SERVER, default http://127.0.0.1:8080), --token TOKEN (SDNLB_TOKEN),
-o table|json|yaml (apply and diff: table prints a list of changes, json and yaml the API's diff).

Exit codes: 0 done, 1 the API refused (its message is printed), 2 bad command line,
3 the API could not be reached, or went away during watch. diff exits 0 when FILE matches
the configuration, 1 when applying it would change something, and 4 when the API refuses
FILE (2 and 3 as above).
`

// cliKinds are what get lists, with the columns of its table.
var cliKinds = map[string][]string{
	"vips":     {"id", "name", "address", "protocol", "port", "pool_id", "status"},
	"pools":    {"id", "name", "vip_id", "lb_method", "dispatch", "forwarding", "protocol", "slow_start"},
	"members":  {"id", "pool_id", "address", "port", "weight", "capacity", "status"},
	"monitors": {"id", "name", "type", "port", "delay", "timeout", "max_retries", "admin_state_up"},
}

// cliError is an error with the exit code it means.
type cliError struct {
	code int
	err  error
}

func (e *cliError) Error() string { return e.err.Error() }

func usageErr(format string, args ...any) error {
	return &cliError{exitUsage, fmt.Errorf(format, args...)}
}

// runCLI runs one client command and returns its exit code.
func runCLI(args []string, getenv func(string) string, stdin io.Reader, stdout, stderr io.Writer) int {
	err := cli(args, getenv, stdin, stdout)
	if err == nil {
		return exitOK
	} else if errors.Is(err, errDiffers) {
		return exitDiffers // the diff printed says how
	}
	fmt.Fprintln(stderr, "sdnlb:", err)
	var ce *cliError
	if errors.As(err, &ce) {
		return ce.code
	}
	return exitAPIError
}

// cliFlags are the flags of the client commands.
type cliFlags struct {
	server, token, output, file string
	prune, dryRun               bool
}

func (f *cliFlags) flagSet(getenv func(string) string) *flag.FlagSet {
	fs := flag.NewFlagSet("sdnlb", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.StringVar(&f.server, "server", envOr(getenv, "SDNLB_SERVER", "http://127.0.0.1:8080"), "the sdnlb API (SDNLB_SERVER)")
	fs.StringVar(&f.token, "token", getenv("SDNLB_TOKEN"), "the API token (SDNLB_TOKEN)")
	fs.StringVar(&f.output, "o", "table", "output: table, json or yaml")
	fs.StringVar(&f.file, "f", "", "apply, diff: the configuration file, JSON or YAML; - reads stdin")
	fs.BoolVar(&f.prune, "prune", false, "apply, diff: also delete what the file does not list")
	fs.BoolVar(&f.dryRun, "dry-run", false, "apply: report the changes but make none")
	return fs
}

// cliArgs tells a client command's arguments from the service's: they
// start with one of cliCommands, or with client flags (sdnlb --server URL
// get vips), which it moves after the command. Client flags followed by
// no command, or by something else, are a client command's too: cli
// says what is wrong with them.
func cliArgs(args []string) ([]string, bool) {
	var f cliFlags
	fs := f.flagSet(func(string) string { return "" })
	if fs.Parse(args) != nil {
		return nil, false
	}
	flags, rest := args[:len(args)-fs.NArg()], fs.Args()
	if len(flags) == 0 && (len(rest) == 0 || !slices.Contains(cliCommands, rest[0])) {
		return nil, false
	}
	cmd := ""
	if len(rest) > 0 {
		cmd, rest = rest[0], rest[1:]
	}
	return slices.Concat([]string{cmd}, flags, rest), true
}

func cli(args []string, getenv func(string) string, stdin io.Reader, stdout io.Writer) error {
	cmd, args := args[0], args[1:]
	var f cliFlags
	fs := f.flagSet(getenv)
	// Flags may come after the arguments, as in kubectl.
	var pos []string
	for len(args) > 0 {
		if err := fs.Parse(args); errors.Is(err, flag.ErrHelp) {
			_, err := io.WriteString(stdout, cliUsage)
			return err
		} else if err != nil {
			return usageErr("%v", err)
		}
		if fs.NArg() == 0 {
			break
		}
		pos, args = append(pos, fs.Arg(0)), fs.Args()[1:]
	}
	if !slices.Contains(outputs, f.output) {
		return usageErr("-o must be table, json or yaml, not %q", f.output)
	}
	c := &apiClient{base: strings.TrimSuffix(f.server, "/"), token: f.token, http: newHTTPClient()}
	switch cmd {
	case "get":
		if len(pos) == 1 && pos[0] == "config" {
			return c.getConfig(stdout, f.output)
		}
		if len(pos) != 1 || cliKinds[pos[0]] == nil {
			return usageErr("usage: sdnlb get vips|pools|members|monitors|config [-o table|json|yaml]")
		}
		return c.get(stdout, pos[0], f.output)
	case "describe":
		if len(pos) != 2 || pos[0] != "pool" {
			return usageErr("usage: sdnlb describe pool ID")
		}
		return c.describePool(stdout, pos[1], f.output)
	case "drain", "undrain":
		if len(pos) != 1 {
			return usageErr("usage: sdnlb %s MEMBER", cmd)
		}
		return c.setMemberAdmin(stdout, pos[0], cmd == "undrain")
	case "watch":
		if len(pos) != 2 || pos[0] != "pool" {
			return usageErr("usage: sdnlb watch pool ID")
		}
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
		defer stop()
		return c.watchPool(ctx, stdout, pos[1], f.output)
	case "apply", "diff":
		if len(pos) != 0 || f.file == "" || (cmd == "diff" && f.dryRun) {
			return usageErr("usage: sdnlb apply -f FILE [--prune] [--dry-run] | sdnlb diff -f FILE [--prune]")
		}
		return c.apply(stdin, stdout, f.file, cmd, sdnlb.ApplyOptions{Prune: f.prune, DryRun: f.dryRun || cmd == "diff"}, f.output)
	case "completion":
		if len(pos) != 1 || pos[0] != "bash" {
			return usageErr("usage: sdnlb completion bash")
		}
		_, err := io.WriteString(stdout, bashCompletion)
		return err
	}
	what := fmt.Sprintf("unknown command %q", cmd)
	if cmd == "" {
		what = "no command"
	}
	return usageErr("%s: the commands are %s (sdnlb get -h tells more)", what, strings.Join(cliCommands, ", "))
}

func envOr(getenv func(string) string, name, def string) string {
	if v := getenv(name); v != "" {
		return v
	}
	return def
}

func newHTTPClient() *http.Client { return &http.Client{Timeout: 30 * time.Second} }

// apiClient calls a running sdnlb's API.
type apiClient struct {
	base, token string
	http        *http.Client
}

// do sends a request and decodes a JSON answer into out; an error answer
// becomes an error that names the API's code, field and message.
func (c *apiClient) do(ctx context.Context, method, path string, body, out any) error {
	resp, err := c.send(ctx, method, path, body)
	if err != nil {
		return err
	}
	return decodeAnswer(resp, out)
}

// decodeAnswer decodes a JSON answer into out (when not nil) and closes
// it; an error answer becomes an error that names the API's code, field
// and message.
func decodeAnswer(resp *http.Response, out any) error {
	defer resp.Body.Close()
	if resp.StatusCode >= 300 {
		return apiError(resp)
	}
	if out == nil {
		return nil
	}
	return json.NewDecoder(resp.Body).Decode(out)
}

// send sends body, when not nil, as JSON.
func (c *apiClient) send(ctx context.Context, method, path string, body any) (*http.Response, error) {
	if body == nil {
		return c.sendBody(ctx, method, path, "", nil)
	}
	b, err := json.Marshal(body)
	if err != nil {
		return nil, err
	}
	return c.sendBody(ctx, method, path, "application/json", b)
}

// sendBody sends body, when not nil, as mediaType.
func (c *apiClient) sendBody(ctx context.Context, method, path, mediaType string, body []byte) (*http.Response, error) {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, rd)
	if err != nil {
		return nil, usageErr("--server %q: %v", c.base, err)
	}
	if body != nil {
		req.Header.Set("Content-Type", mediaType)
	}
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, &cliError{exitNoServer, fmt.Errorf("cannot reach %s (--server or SDNLB_SERVER names the API): %w", c.base, err)}
	}
	return resp, nil
}

func apiError(resp *http.Response) error {
	var e struct {
		Error struct{ Code, Message, Field string } `json:"error"`
	}
	data, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if json.Unmarshal(data, &e) != nil || e.Error.Message == "" {
		return fmt.Errorf("%s: %s", resp.Status, bytes.TrimSpace(data))
	}
	if e.Error.Field != "" {
		return fmt.Errorf("%s (%s, field %s)", e.Error.Message, e.Error.Code, e.Error.Field)
	}
	return fmt.Errorf("%s (%s)", e.Error.Message, e.Error.Code)
}

// get lists every object of kind, following the pages.
func (c *apiClient) get(w io.Writer, kind, output string) error {
	all := []map[string]any{} // [] when there is none
	for after := ""; ; {
		var page map[string]json.RawMessage
		path := "/v1/" + kind + "?limit=1000"
		if after != "" {
			path += "&after=" + url.QueryEscape(after)
		}
		if err := c.do(context.Background(), http.MethodGet, path, nil, &page); err != nil {
			return err
		}
		var items []map[string]any
		if err := json.Unmarshal(page[kind], &items); err != nil {
			return fmt.Errorf("unexpected answer from %s: %w", path, err)
		}
		all = append(all, items...)
		var next string
		_ = json.Unmarshal(page["next"], &next)
		if next == "" {
			break
		}
		after = next
	}
	if output != "table" {
		return writeStructured(w, output, all)
	}
	cols := cliKinds[kind]
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, strings.ToUpper(strings.Join(cols, "\t")))
	for _, item := range all {
		cells := make([]string, len(cols))
		for i, col := range cols {
			cells[i] = cell(item[col])
		}
		fmt.Fprintln(tw, strings.Join(cells, "\t"))
	}
	return tw.Flush()
}

func cell(v any) string {
	switch v := v.(type) {
	case nil:
		return "-"
	case string:
		if v == "" {
			return "-"
		}
		return v
	case float64:
		return strconv.FormatFloat(v, 'f', -1, 64)
	}
	return fmt.Sprint(v)
}

func writeIndented(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// describePool shows a pool, its members' health and its live counters.
func (c *apiClient) describePool(w io.Writer, id, output string) error {
	ctx := context.Background()
	var pool sdnlb.Pool
	if err := c.do(ctx, http.MethodGet, "/v1/pools/"+url.PathEscape(id), nil, &pool); err != nil {
		return err
	}
	var stats sdnlb.PoolStats
	if err := c.do(ctx, http.MethodGet, "/v1/pools/"+url.PathEscape(id)+"/stats", nil, &stats); err != nil {
		return err
	}
	if output != "table" {
		return writeStructured(w, output, map[string]any{"pool": pool, "stats": stats})
	}
	slowStart := ""
	if pool.SlowStart > 0 {
		slowStart = fmt.Sprintf(", slow start %s", pool.SlowStart.Duration())
	}
	fmt.Fprintf(w, "Pool:        %s (%s)\nVIP:         %s\nMethod:      %s, dispatched by the %s, %s%s\nMonitors:    %s\n",
		pool.ID, pool.Name, cell(pool.VIPID), pool.LBMethod, strings.ToLower(string(pool.Dispatch)), pool.Forwarding, slowStart,
		cell(strings.Join(pool.MonitorIDs, ", ")))
	fmt.Fprintf(w, "Connections: %d active, %d total, %d refused\nTraffic:     %s in, %s out\n\n",
		stats.ActiveConnections, stats.TotalConnections, stats.RefusedConnections, bytesText(stats.BytesIn), bytesText(stats.BytesOut))
	return memberTable(w, &stats)
}

func memberTable(w io.Writer, stats *sdnlb.PoolStats) error {
	members := slices.Clone(stats.Members)
	slices.SortFunc(members, func(a, b sdnlb.MemberStats) int { return strings.Compare(a.MemberID, b.MemberID) })
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "MEMBER\tADDRESS\tSTATUS\tSINCE\tACTIVE\tTOTAL\tIN\tOUT")
	for _, m := range members {
		since := "-"
		if !m.StatusSince.IsZero() {
			since = time.Since(m.StatusSince).Round(time.Second).String()
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%d\t%s\t%s\n", m.MemberID, sdnlb.HostPort(m.Address, m.Port), m.Status, since,
			m.ActiveConnections, m.TotalConnections, bytesText(m.BytesIn), bytesText(m.BytesOut))
	}
	return tw.Flush()
}

func bytesText(n uint64) string {
	const unit = 1024
	if n < unit {
		return strconv.FormatUint(n, 10) + " B"
	}
	div, exp := uint64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}

// setMemberAdmin drains a member (it takes no new connections and keeps
// its own) or puts it back.
func (c *apiClient) setMemberAdmin(w io.Writer, id string, up bool) error {
	var m sdnlb.Member
	if err := c.do(context.Background(), http.MethodPatch, "/v1/members/"+url.PathEscape(id),
		map[string]any{"admin_state_up": up}, &m); err != nil {
		return err
	}
	_, err := fmt.Fprintf(w, "member %s: %s\n", m.ID, m.Status)
	return err
}

// watchPool follows a pool's stats stream, printing the members' table at
// every event (json: one line per event), until interrupted or the
// stream ends, which is an error: the server went away.
func (c *apiClient) watchPool(ctx context.Context, w io.Writer, id, output string) error {
	c.http.Timeout = 0 // a stream
	resp, err := c.send(ctx, http.MethodGet, "/v1/pools/"+url.PathEscape(id)+"/stats?watch=true", nil)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode >= 300 {
		return apiError(resp)
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	event := ""
	for sc.Scan() {
		line := sc.Text()
		if name, ok := strings.CutPrefix(line, "event: "); ok {
			event = name
			continue
		}
		data, ok := strings.CutPrefix(line, "data: ")
		if !ok {
			continue
		}
		if event == "error" {
			return fmt.Errorf("the stream ended: %s", data)
		}
		if output != "table" {
			if err := writeEvent(w, output, data); err != nil {
				return err
			}
			continue
		}
		var stats sdnlb.PoolStats
		if err := json.Unmarshal([]byte(data), &stats); err != nil {
			return fmt.Errorf("unexpected event: %w", err)
		}
		fmt.Fprintf(w, "%s  pool %s: %d active, %d total, %d refused\n", time.Now().Format(time.TimeOnly),
			stats.PoolID, stats.ActiveConnections, stats.TotalConnections, stats.RefusedConnections)
		if err := memberTable(w, &stats); err != nil {
			return err
		}
		fmt.Fprintln(w)
	}
	if ctx.Err() != nil {
		return nil // interrupted
	}
	if err := sc.Err(); err != nil {
		return &cliError{exitNoServer, fmt.Errorf("lost %s: the stream broke: %w", c.base, err)}
	}
	// Without an error event, the server ends a stream only when it stops.
	return &cliError{exitNoServer, fmt.Errorf("lost %s: it closed the stream, stopping or restarting", c.base)}
}

const bashCompletion = `# bash completion for sdnlb: source <(sdnlb completion bash)
_sdnlb() {
	local cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD-1]}
	case $COMP_CWORD in
	1) COMPREPLY=($(compgen -W "serve get describe drain undrain watch apply diff completion" -- "$cur")) ;;
	2) case $prev in
		get) COMPREPLY=($(compgen -W "vips pools members monitors config" -- "$cur")) ;;
		describe|watch) COMPREPLY=($(compgen -W "pool" -- "$cur")) ;;
		apply|diff) COMPREPLY=($(compgen -W "-f" -- "$cur")) ;;
		completion) COMPREPLY=($(compgen -W "bash" -- "$cur")) ;;
		esac ;;
	*) case $prev in
		-f) COMPREPLY=($(compgen -f -- "$cur")) ;;
		-o) COMPREPLY=($(compgen -W "table json yaml" -- "$cur")) ;;
		*) case ${COMP_WORDS[1]} in
			apply) COMPREPLY=($(compgen -W "-f --prune --dry-run --server --token -o" -- "$cur")) ;;
			diff) COMPREPLY=($(compgen -W "-f --prune --server --token -o" -- "$cur")) ;;
			*) COMPREPLY=($(compgen -W "--server --token -o" -- "$cur")) ;;
			esac ;;
		esac ;;
	esac
}
complete -F _sdnlb sdnlb
`
