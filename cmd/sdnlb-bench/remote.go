package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/sdnlb/sdnlb"
)

// apiClient configures a separately running sdnlb through its REST API.
type apiClient struct {
	base  string
	token string
	hc    *http.Client
}

func newAPIClient(cfg *config) *apiClient {
	return &apiClient{base: cfg.api, token: cfg.token, hc: &http.Client{Timeout: 10 * time.Second}}
}

// send sends body as JSON and returns the answer's body.
func (c *apiClient) send(ctx context.Context, method, path string, body any) ([]byte, error) {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return nil, err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, strings.TrimSuffix(c.base, "/")+path, rd)
	if err != nil {
		return nil, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", method, path, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 4<<20)) // the topology of many switches is the largest

	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", method, path, err)
	}
	if resp.StatusCode >= 300 {
		return nil, fmt.Errorf("%s %s: %s: %s", method, path, resp.Status, bytes.TrimSpace(data))
	}
	return data, nil
}

// do sends body as JSON and decodes the answer into out (when not nil).
func (c *apiClient) do(ctx context.Context, method, path string, body, out any) error {
	data, err := c.send(ctx, method, path, body)
	if err != nil || out == nil {
		return err
	}
	if err := json.Unmarshal(data, out); err != nil {
		return fmt.Errorf("%s %s: decode: %w", method, path, err)
	}
	return nil
}

// configureRemote creates the bench VIP, its round-robin pool and members.
// A VIP left by an earlier bench run on the same address is deleted
// first; any other VIP there is an error. cleanup deletes what was made.
func configureRemote(ctx context.Context, c *apiClient, cfg *config) (cleanup func() error, err error) {
	var list struct {
		VIPs []sdnlb.VIP `json:"vips"`
	}
	if err := c.do(ctx, http.MethodGet, "/v1/vips?address="+url.QueryEscape(cfg.vip.Addr().String()), nil, &list); err != nil {
		return nil, err
	}
	for _, v := range list.VIPs {
		if v.Name != benchName {
			return nil, fmt.Errorf("VIP %s (%q) already uses %v; the bench will not touch it", v.ID, v.Name, cfg.vip.Addr())
		}
		if err := c.do(ctx, http.MethodDelete, "/v1/vips/"+url.PathEscape(v.ID)+"?cascade=true", nil, nil); err != nil {
			return nil, fmt.Errorf("delete the VIP of an earlier bench run: %w", err)
		}
	}

	var vip sdnlb.VIP
	if err := c.do(ctx, http.MethodPost, "/v1/vips", map[string]any{
		"name": benchName, "address": cfg.vip.Addr().String(), "protocol": sdnlb.ProtocolTCP, "port": cfg.vip.Port(),
	}, &vip); err != nil {
		return nil, err
	}
	cleanup = func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		return c.do(ctx, http.MethodDelete, "/v1/vips/"+url.PathEscape(vip.ID)+"?cascade=true", nil, nil)
	}
	var pool sdnlb.Pool
	if err := c.do(ctx, http.MethodPost, "/v1/pools", map[string]any{
		"name": benchName, "vip_id": vip.ID, "lb_method": sdnlb.RoundRobin, "protocol": sdnlb.ProtocolTCP,
		"dispatch": sdnlb.DispatchController,
	}, &pool); err != nil {
		return cleanup, err
	}
	addr := cfg.firstMember
	for range cfg.members {
		if err := c.do(ctx, http.MethodPost, "/v1/members", map[string]any{
			"pool_id": pool.ID, "address": addr.String(), "port": cfg.vip.Port(), "weight": 1,
		}, nil); err != nil {
			return cleanup, err
		}
		addr = addr.Next()
	}
	return cleanup, nil
}
