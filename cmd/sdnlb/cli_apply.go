package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/sdnlb/sdnlb"
	"github.com/sdnlb/sdnlb/api"
)

// outputs are what -o takes.
var outputs = []string{"table", "json", "yaml"}

// errDiffers is diff's answer that applying the file would change
// something: exit code exitDiffers, with the diff already printed.
var errDiffers = &cliError{exitDiffers, errors.New("the configuration differs from the file")}

// applyTimeout bounds an apply, which may write a whole configuration.
const applyTimeout = 5 * time.Minute

// writeStructured writes v as indented JSON or as YAML.
func writeStructured(w io.Writer, output string, v any) error {
	if output == "json" {
		return writeIndented(w, v)
	}
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return writeYAML(w, b)
}

// writeYAML writes a JSON document as YAML.
func writeYAML(w io.Writer, js []byte) error {
	y, err := yaml.JSONToYAML(js)
	if err != nil {
		return fmt.Errorf("unexpected answer: %w", err)
	}
	_, err = w.Write(y)
	return err
}

// writeEvent writes one event of a stream: JSON as the stream sends it,
// one line each, or YAML documents.
func writeEvent(w io.Writer, output, data string) error {
	if output == "json" {
		_, err := fmt.Fprintln(w, data)
		return err
	}
	if _, err := io.WriteString(w, "---\n"); err != nil {
		return err
	}
	return writeYAML(w, []byte(data))
}

// getConfig exports the whole configuration: YAML unless -o json.
func (c *apiClient) getConfig(w io.Writer, output string) error {
	var doc json.RawMessage
	if err := c.do(context.Background(), http.MethodGet, "/v1/config", nil, &doc); err != nil {
		return err
	}
	if output == "json" {
		var b bytes.Buffer
		if err := json.Indent(&b, doc, "", "  "); err != nil {
			return err
		}
		b.WriteByte('\n')
		_, err := b.WriteTo(w)
		return err
	}
	return writeYAML(w, doc)
}

// readDocument reads a configuration file ("-": stdin), no larger than
// the API takes, and tells its media type: by its extension, else JSON
// when it starts with "{", else YAML.
func readDocument(stdin io.Reader, file string) ([]byte, string, error) {
	in := stdin
	if file != "-" {
		f, err := os.Open(file)
		if err != nil {
			return nil, "", usageErr("-f: %v", err)
		}
		defer f.Close()
		in = f
	}
	doc, err := io.ReadAll(io.LimitReader(in, api.MaxConfigBodyBytes+1))
	if err != nil {
		return nil, "", usageErr("-f %s: %v", file, err)
	}
	if len(doc) > api.MaxConfigBodyBytes {
		return nil, "", usageErr("-f %s: larger than the %d MiB the API takes for a configuration", file, api.MaxConfigBodyBytes>>20)
	}
	switch strings.ToLower(filepath.Ext(file)) {
	case ".json":
		return doc, "application/json", nil
	case ".yaml", ".yml":
		return doc, "application/yaml", nil
	}
	if bytes.HasPrefix(bytes.TrimSpace(doc), []byte("{")) {
		return doc, "application/json", nil
	}
	return doc, "application/yaml", nil
}

// apply sends the file to PUT /v1/config and prints the diff the API
// answers; cmd is "apply" or "diff" (a dry run, whose exit code says
// whether anything would change).
func (c *apiClient) apply(stdin io.Reader, w io.Writer, file, cmd string, opts sdnlb.ApplyOptions, output string) error {
	doc, mediaType, err := readDocument(stdin, file)
	if err != nil {
		return err
	}
	path := fmt.Sprintf("/v1/config?prune=%t&dry_run=%t", opts.Prune, opts.DryRun)
	ctx, cancel := context.WithTimeout(context.Background(), applyTimeout)
	defer cancel()
	c.http.Timeout = 0 // ctx bounds it
	var diff sdnlb.ConfigDiff
	resp, err := c.sendBody(ctx, http.MethodPut, path, mediaType, doc)
	if err == nil {
		err = decodeAnswer(resp, &diff)
	}
	if err != nil {
		var ce *cliError
		if cmd == "diff" && !errors.As(err, &ce) {
			return &cliError{exitDiffAPIError, err}
		}
		return err
	}
	if output != "table" {
		err = writeStructured(w, output, diff)
	} else {
		err = writeDiff(w, &diff)
	}
	if err == nil && cmd == "diff" && diff.Changed {
		return errDiffers
	}
	return err
}

// writeDiff prints a diff as a list: "+" created, "~" updated with each
// field's old and new value, "-" deleted, then a count.
func writeDiff(w io.Writer, d *sdnlb.ConfigDiff) error {
	var created, updated, deleted, unchanged int
	var b strings.Builder
	for _, k := range d.Kinds() {
		for _, o := range k.Diff.Created {
			fmt.Fprintf(&b, "+ %s\n", objectName(k.Kind, o))
		}
		for _, o := range k.Diff.Updated {
			fmt.Fprintf(&b, "~ %s\n", objectName(k.Kind, o))
			for _, f := range o.Fields {
				fmt.Fprintf(&b, "    %s: %s -> %s\n", f.Field, jsonText(f.Old), jsonText(f.New))
			}
		}
		for _, o := range k.Diff.Deleted {
			fmt.Fprintf(&b, "- %s\n", objectName(k.Kind, o))
		}
		created, updated, deleted = created+len(k.Diff.Created), updated+len(k.Diff.Updated), deleted+len(k.Diff.Deleted)
		unchanged += k.Diff.Unchanged
	}
	switch {
	case !d.Changed:
		fmt.Fprintf(&b, "no changes (%d unchanged)\n", unchanged)
	case d.DryRun:
		fmt.Fprintf(&b, "would create %d, update %d, delete %d (%d unchanged)\n", created, updated, deleted, unchanged)
	default:
		fmt.Fprintf(&b, "created %d, updated %d, deleted %d (%d unchanged)\n", created, updated, deleted, unchanged)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// objectName names an object of a diff: "vip web", with how the file
// keyed it when it gave no id, as "vip (name web)" in a dry run.
func objectName(kind sdnlb.EventKind, o sdnlb.ObjectDiff) string {
	name := string(kind)
	if o.ID != "" {
		name += " " + o.ID
	}
	if o.Key != "" {
		name += " (" + o.Key + ")"
	}
	return name
}

// jsonText writes a field's value as JSON writes it: strings quoted, null.
func jsonText(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}
