package sdnlb

import (
	"context"
	"time"
)

// BGP is what a node announces over BGP and to whom: its speaker's
// settings, the sessions with its peers and the routes it announces.
type BGP struct {
	// Enabled says the node speaks BGP (--bgp-asn); the rest is empty
	// when it does not.
	Enabled  bool   `json:"enabled"`
	ASN      uint32 `json:"asn" example:"65001"`
	RouterID string `json:"router_id" example:"192.0.2.10"`
	// GracefulRestart is the restart time the node asks its peers to keep
	// its routes for while it restarts, in seconds; 0: none.
	GracefulRestart int `json:"graceful_restart" example:"120"`
	// Holding says the node has not opened its sessions yet: after it
	// starts with graceful restart, it waits until it knows who serves
	// each edge, so that its first announcement is whole.
	Holding bool       `json:"holding"`
	Peers   []*BGPPeer `json:"peers"`
	// Routes are the paths announced, by prefix and next hop.
	Routes []*BGPRoute `json:"routes"`
}

// BGPPeer is one configured BGP session.
type BGPPeer struct {
	Address string `json:"address" example:"192.0.2.1"`
	Port    int    `json:"port" example:"179"`
	ASN     uint32 `json:"asn" example:"65000"`
	// State is the session's state in the BGP finite state machine.
	State string `json:"state" enums:"IDLE,CONNECT,ACTIVE,OPENSENT,OPENCONFIRM,ESTABLISHED" example:"ESTABLISHED"`
	// Since is when the session was established; null while it is not.
	Since *time.Time `json:"since" extensions:"x-nullable"`
	// Received and Advertised count the paths received from the peer and
	// sent to it.
	Received   uint64 `json:"received"`
	Advertised uint64 `json:"advertised"`
	// AddPaths says the peer takes several paths per prefix: a VIP served
	// at several edges reaches it with every edge's next hop, for ECMP.
	// Without it the peer gets one path per prefix.
	AddPaths bool `json:"add_paths"`
	// GracefulRestart says the peer keeps this node's routes while the
	// node restarts (both sides negotiated it).
	GracefulRestart bool `json:"graceful_restart"`
}

// BGPRoute is one announced path: a VIP's address, next hop the edge
// switch that serves it.
type BGPRoute struct {
	Prefix  string `json:"prefix" example:"203.0.113.10/32"`
	NextHop string `json:"next_hop" example:"192.0.2.11"`
	// DPID is the edge switch the next hop names, as Switch.DPID.
	DPID string `json:"dpid"`
	// VIPIDs are the VIPs on the address that made it announced.
	VIPIDs []string `json:"vip_ids"`
}

// BGPService shows what the node announces over BGP.
type BGPService interface {
	BGP(ctx context.Context) (*BGP, error)
}
