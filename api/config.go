package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"mime"
	"net/http"
	"reflect"
	"strings"

	goyaml "go.yaml.in/yaml/v2"
	"sigs.k8s.io/yaml"

	"github.com/sdnlb/sdnlb"
)

// A configuration document lists VIPs, pools, members and monitors in the
// native shapes, each as a POST would create it, without the fields the
// store derives. PUT /v1/config converges to one, GET /v1/config exports
// one.

// MaxConfigBodyBytes bounds the body of PUT /v1/config, which holds a
// whole configuration: some 200,000 members written compactly.
const MaxConfigBodyBytes = 32 << 20

const mediaYAML = "application/yaml"

// configDocument is the body of PUT /v1/config and the answer of GET
// /v1/config. A list left out is empty.
type configDocument struct {
	VIPs     []configVIP     `json:"vips" validate:"optional"`
	Pools    []configPool    `json:"pools" validate:"optional"`
	Members  []memberCreate  `json:"members" validate:"optional"`
	Monitors []configMonitor `json:"monitors" validate:"optional"`
}

// configVIP is a VIP of a document. Its pool is derived: the pool's vip_id
// links the two.
type configVIP struct {
	vipCreate
	PoolID readOnly `json:"pool_id" swaggertype:"string" readonly:"true" validate:"optional"`
}

// configPool is a pool of a document, with the monitors associated with it.
type configPool struct {
	poolCreate
	MonitorIDs []string `json:"monitor_ids" example:"shop-check" validate:"optional"`
}

// configMonitor is a monitor of a document. Its pools are derived: a
// pool's monitor_ids associates the two.
type configMonitor struct {
	monitorCreate
	PoolIDs readOnly `json:"pool_ids" swaggertype:"array,string" readonly:"true" validate:"optional"`
}

// rawConfigDocument is a document whose objects are decoded one by one,
// so that an error names the object's index.
type rawConfigDocument struct {
	VIPs     []json.RawMessage `json:"vips"`
	Pools    []json.RawMessage `json:"pools"`
	Members  []json.RawMessage `json:"members"`
	Monitors []json.RawMessage `json:"monitors"`
}

// decodeObjects decodes the objects of one list of a document strictly, as
// the bodies of single-object writes are decoded; errors name the object
// by its path (vips[2]).
func decodeObjects[R any](list string, raws []json.RawMessage) ([]*R, error) {
	reqs := make([]*R, len(raws))
	for i, raw := range raws {
		path := sdnlb.ConfigPath(list, i)
		if kind := jsonKind(raw); kind != "an object" {
			return nil, sdnlb.FieldErrorf(sdnlb.EINVALID, path, "%s must be an object, not %s", path, kind)
		}
		req := new(R)
		if err := decodeStrict(raw, req); err != nil {
			return nil, sdnlb.ConfigObjectError(path, "", withoutEmbedded[R](err))
		}
		if err := checkFields(req); err != nil {
			return nil, sdnlb.ConfigObjectError(path, "", err)
		}
		reqs[i] = req
	}
	return reqs, nil
}

// jsonKind names the kind of a JSON value by its first byte.
func jsonKind(raw json.RawMessage) string {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return "nothing"
	}
	switch raw[0] {
	case '{':
		return "an object"
	case '[':
		return "an array"
	case '"':
		return "a string"
	case 't', 'f':
		return "true or false"
	case 'n':
		return "null"
	}
	return "a number"
}

// withoutEmbedded drops from the field err names the name of the struct R
// embeds, which encoding/json puts in a type error's path
// ("poolRequest.admin_state_up").
func withoutEmbedded[R any](err error) error {
	var e *sdnlb.Error
	if !errors.As(err, &e) {
		return err
	}
	for f := range reflect.TypeFor[R]().Fields() {
		if field, ok := strings.CutPrefix(e.Field, f.Name+"."); f.Anonymous && ok {
			return &sdnlb.Error{Code: e.Code, Field: field, Message: strings.ReplaceAll(e.Message, e.Field, field)}
		}
	}
	return err
}

// declaredConfig decodes a document into the objects it declares: each
// one what a POST of it would create, absent fields taking their defaults.
func (s *Server) declaredConfig(doc *rawConfigDocument) (*sdnlb.Config, error) {
	vips, err := decodeObjects[configVIP]("vips", doc.VIPs)
	if err != nil {
		return nil, err
	}
	pools, err := decodeObjects[configPool]("pools", doc.Pools)
	if err != nil {
		return nil, err
	}
	members, err := decodeObjects[memberCreate]("members", doc.Members)
	if err != nil {
		return nil, err
	}
	monitors, err := decodeObjects[configMonitor]("monitors", doc.Monitors)
	if err != nil {
		return nil, err
	}
	cfg := &sdnlb.Config{}
	for _, req := range vips {
		cfg.VIPs = append(cfg.VIPs, s.vips().newObject(req.created()))
	}
	for _, req := range pools {
		p := s.pools().newObject(req.created())
		if req.MonitorIDs != nil {
			p.MonitorIDs = req.MonitorIDs
		}
		cfg.Pools = append(cfg.Pools, p)
	}
	for _, req := range members {
		cfg.Members = append(cfg.Members, s.members().newObject(req.created()))
	}
	for _, req := range monitors {
		cfg.Monitors = append(cfg.Monitors, s.monitors().newObject(req.created()))
	}
	return cfg, nil
}

// decodeConfigBody reads a document sent as JSON or YAML. YAML is turned
// into JSON first (duplicate keys refused), so that both take the one
// strict decoding.
func decodeConfigBody(w http.ResponseWriter, r *http.Request, doc *rawConfigDocument) error {
	ct := r.Header.Get("Content-Type")
	if !isYAMLMedia(ct) {
		return decodeJSON(w, r, doc)
	}
	body, err := readBody(w, r)
	if err != nil {
		return err
	}
	js, err := yaml.YAMLToJSONStrict(body)
	if err != nil {
		return sdnlb.Errorf(sdnlb.EINVALID, "the body is not valid YAML: %s", strings.TrimPrefix(err.Error(), "error converting YAML to JSON: "))
	}
	if err := checkOneYAMLDocument(body); err != nil {
		return err
	}
	if isJSONNull(js) {
		return sdnlb.Errorf(sdnlb.EINVALID, "the YAML document is empty or null; a mapping is required")
	}
	return decodeStrict(js, doc)
}

// checkOneYAMLDocument refuses a YAML stream of several documents: the
// conversion reads the first only, and applying that alone (pruning what
// the others declare) is not what the client asked for. Empty documents
// after the first, as a trailing "---" leaves, are allowed.
func checkOneYAMLDocument(body []byte) error {
	dec := goyaml.NewDecoder(bytes.NewReader(body))
	documents := 0
	for i := 0; ; i++ {
		var doc any
		err := dec.Decode(&doc)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return sdnlb.Errorf(sdnlb.EINVALID, "the body is not valid YAML: %s", strings.TrimPrefix(err.Error(), "yaml: "))
		}
		if i == 0 || doc != nil {
			documents++
		}
	}
	if documents > 1 {
		return sdnlb.Errorf(sdnlb.EINVALID,
			"the body holds %d YAML documents (split by ---); PUT /v1/config takes one document that declares the whole configuration", documents)
	}
	return nil
}

// isYAMLMedia reports whether the Content-Type ct names YAML, in UTF-8.
// No page can send it to another site without asking first (it is no
// form's type), so it passes guardWrites; only PUT /v1/config reads it.
func isYAMLMedia(ct string) bool {
	media, params, err := mime.ParseMediaType(ct)
	if err != nil || !(media == mediaYAML || media == "application/x-yaml") {
		return false
	}
	cs, ok := params["charset"]
	return !ok || strings.EqualFold(cs, "utf-8")
}

// isConfigPut reports whether r writes a whole configuration, whose body
// may be larger than one object's.
func isConfigPut(r *http.Request) bool {
	return r.Method == http.MethodPut && strings.TrimRight(collapse(r.URL.Path), "/") == "/v1/config"
}

// applyOptions reads ?prune= and ?dry_run=.
func applyOptions(r *http.Request) (sdnlb.ApplyOptions, error) {
	prune, err := queryBool(r, "prune")
	if err != nil {
		return sdnlb.ApplyOptions{}, err
	}
	dryRun, err := queryBool(r, "dry_run")
	return sdnlb.ApplyOptions{Prune: prune, DryRun: dryRun}, err
}

// handleConfigApply converges the configuration to a document.
//
//	@Summary		Apply a whole configuration
//	@ID				configApply
//	@Description	Converges to the VIPs, pools, members and monitors of the document in one transaction: creates what is new, updates what differs and, with prune=true, deletes every object the document does not list (members first, monitors last). Each object is what a POST of it would create: fields left out take their defaults. Objects are keyed by id; one without an id by its name, which must then be unique among its kind in the document (a member without an id by its pool, address and port), and matched to the stored object of that name.
//	@Description	A YAML body holds one document: a stream of several (split by ---) is refused, as applying the first alone would be wrong; empty documents after it, as a trailing --- leaves, are allowed.
//	@Description	References (a pool's vip_id and monitor_ids, a member's pool_id) name objects of the document or stored ones by id, or an object the document keys by name by its name. A pool's vip_id links it to its VIP and its monitor_ids associate its monitors; a VIP's pool_id and a monitor's pool_ids are derived and refused here.
//	@Description	The answer is the diff: per kind, what is created, updated (each field, old and new) or deleted, and how many objects are unchanged. dry_run=true answers the same diff and changes nothing: it reads in a read transaction, which makes no write wait, and checks each object alone and every reference; the rules that span objects (an address or endpoint taken, a pool's protocol and address family against its VIP's, a DSR pool's member ports) are checked by the apply's writes, so the apply may still refuse what a dry run passed. Applying a document again changes nothing and publishes no event. A document with an error changes nothing; the error's field is a path into the document, as members[2].port, and its message names the object's id.
//	@Tags			config
//	@Accept			json
//	@Accept			application/yaml
//	@Produce		json
//	@Param			config	body		configDocument	true	"the whole configuration"
//	@Param			prune	query		bool			false	"also delete every object the document does not list"
//	@Param			dry_run	query		bool			false	"report the changes, but make none"
//	@Param			take_address	query	bool			false	"let the document's VIPs take the addresses of hosts the switches learned (otherwise 409 naming the host)"
//	@Param			If-Match	header	string			false	"the ETag of GET /v1/config: the apply (or dry run) goes ahead only on that version of the configuration (412 otherwise); * matches any"
//	@Success		200		{object}	sdnlb.ConfigDiff
//	@Failure		400		{object}	errorResponse	"invalid; field is a path into the document (vips[0].port)"
//	@Failure		409		{object}	errorResponse	"an object conflicts with another, of the document or a stored one it does not list: an address and port taken, a VIP on a member's address or a host's the switches learned, a member on a VIP's"
//	@Failure		412		{object}	errorResponse	"the configuration changed since the ETag in If-Match was read"
//	@Failure		401		{object}	errorResponse	"the bearer token is missing or wrong (when sdnlb runs with --api-token)"
//	@Failure		403		{object}	errorResponse	"a write from another site's page (see --cors-origin)"
//	@Failure		413		{object}	errorResponse	"the body is over 32 MiB"
//	@Failure		415		{object}	errorResponse	"the body is neither JSON nor YAML"
//	@Security		Bearer
//	@Router			/v1/config [put]
func (s *Server) handleConfigApply(w http.ResponseWriter, r *http.Request) error {
	if s.ConfigApplyService == nil {
		return sdnlb.Errorf(sdnlb.EUNAVAILABLE, "this server cannot apply configurations")
	}
	opts, err := applyOptions(r)
	if err != nil {
		return err
	}
	opts.CheckVIP = s.checkVIPHost
	var doc rawConfigDocument
	if err := decodeConfigBody(w, r, &doc); err != nil {
		return err
	}
	want, err := s.declaredConfig(&doc)
	if err != nil {
		return err
	}
	diff, err := s.ConfigApplyService.ApplyConfig(r.Context(), want, opts)
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, diff)
}

// handleConfigExport answers the whole configuration as a document,
// encoded object by object as the store reads it.
//
//	@Summary		Export the whole configuration
//	@ID				configExport
//	@Description	Answers every VIP, pool, member and monitor as a document PUT /v1/config takes, each list sorted by id, without what the store derives (status, health, MAC, timestamps, a VIP's pool_id, a monitor's pool_ids). Applying it to an empty server makes the same configuration.
//	@Description	The document is read in one read transaction and sent as it is read, so a large configuration is never whole in the server's memory; a failure after the first bytes ends the connection before the document does. The ETag names this version of the configuration (any write changes it, health does not): PUT /v1/config with it in If-Match applies only to this version.
//	@Tags			config
//	@Produce		json
//	@Success		200	{object}	configDocument
//	@Header			200	{string}	ETag	"the version of the configuration, for If-Match on PUT /v1/config"
//	@Failure		401	{object}	errorResponse	"the bearer token is missing or wrong (with --auth-reads)"
//	@Failure		503	{object}	errorResponse	"the database is unavailable"
//	@Security		Bearer
//	@Router			/v1/config [get]
func (s *Server) handleConfigExport(w http.ResponseWriter, r *http.Request) error {
	return s.ConfigService.ExportConfig(r.Context(), func(cs *sdnlb.ConfigStream) error {
		return streamJSON(w, func(out *jsonStream) error {
			out.header("ETag", cs.ETag)
			out.raw(`{"vips":`)
			if err := writeArray(out, cs.VIPs, func(v *sdnlb.VIP) error { return out.value(exportedVIP{VIP: v}) }); err != nil {
				return err
			}
			out.raw(`,"pools":`)
			if err := writeArray(out, cs.Pools, func(p *sdnlb.Pool) error { return out.value(exportedPool{Pool: p}) }); err != nil {
				return err
			}
			out.raw(`,"members":`)
			if err := writeArray(out, cs.Members, func(m *sdnlb.Member) error { return out.value(exportedMember{Member: m}) }); err != nil {
				return err
			}
			out.raw(`,"monitors":`)
			if err := writeArray(out, cs.Monitors, func(m *sdnlb.Monitor) error { return out.value(exportedMonitor{Monitor: m}) }); err != nil {
				return err
			}
			out.raw("}")
			return nil
		})
	})
}

// The exported objects are the native ones without what the store
// derives: a field of the same JSON name as one of the embedded object's
// hides it, and omitzero leaves it out.

// hidden is a field an exported object leaves out.
type hidden struct{}

type exportedVIP struct {
	*sdnlb.VIP
	PoolID    hidden `json:"pool_id,omitzero"`
	MAC       hidden `json:"mac,omitzero"`
	Status    hidden `json:"status,omitzero"`
	CreatedAt hidden `json:"created_at,omitzero"`
	UpdatedAt hidden `json:"updated_at,omitzero"`
}

type exportedPool struct {
	*sdnlb.Pool
	CreatedAt hidden `json:"created_at,omitzero"`
	UpdatedAt hidden `json:"updated_at,omitzero"`
}

type exportedMember struct {
	*sdnlb.Member
	Status    hidden `json:"status,omitzero"`
	Health    hidden `json:"health,omitzero"`
	CreatedAt hidden `json:"created_at,omitzero"`
	UpdatedAt hidden `json:"updated_at,omitzero"`
}

type exportedMonitor struct {
	*sdnlb.Monitor
	PoolIDs   hidden `json:"pool_ids,omitzero"`
	CreatedAt hidden `json:"created_at,omitzero"`
	UpdatedAt hidden `json:"updated_at,omitzero"`
}
