package api

// The OpenAPI spec in openapi/ is generated from the swag comments on the
// handlers by internal/specgen; regenerate it after changing them
// (openapi's test fails while the committed spec is stale).
//go:generate go run genspec.go

//	@title						sdnlb API
//	@version					1.0
//	@description				sdnlb turns an OpenFlow 1.3 switch into a server load balancer with active health checks.
//	@description				The native API lives under /v1; /quantum/v1.0 keeps Floodlight's LoadBalancer API (see docs/floodlight-compat.md).
//	@description				Errors are {"error":{"code","message","field"}} with code one of invalid, unauthorized, not_found, conflict, too_large, unsupported, unavailable, internal.
//	@license.name				Apache-2.0
//	@license.url				https://www.apache.org/licenses/LICENSE-2.0
//	@BasePath					/
//	@tag.name					vips
//	@tag.description			Virtual addresses clients connect to.
//	@tag.name					pools
//	@tag.description			The members behind a VIP, how the member of a connection is picked (lb_method, dispatch) and how packets reach it (forwarding).
//	@tag.name					members
//	@tag.description			The servers of a pool.
//	@tag.name					monitors
//	@tag.description			Active health checks of pools' members.
//	@tag.name					config
//	@tag.description			The whole configuration as one document: export it, or converge to one (declarative, with a diff and a dry run).
//	@tag.name					stats
//	@tag.description			Live traffic counters, also as a stream.
//	@tag.name					events
//	@tag.description			The configuration change feed.
//	@tag.name					switches
//	@tag.description			The OpenFlow switches connected, and the flows sdnlb installed on them.
//	@tag.name					cluster
//	@tag.description			The sdnlb nodes sharing one database, and which of them leads.
//	@tag.name					bgp
//	@tag.description			What this node announces to routers over BGP: its sessions and the VIPs' routes.
//	@tag.name					probes
//	@tag.description			Liveness and readiness.
//	@tag.name					floodlight
//	@tag.description			Compatibility: Floodlight's LoadBalancer REST API, kept for existing scripts (docs/floodlight-compat.md). Use /v1 for new work.
//	@securityDefinitions.apikey	Bearer
//	@in							header
//	@name						Authorization
//	@description				Type the word Bearer, a space, then the token: Bearer s3cret. The value goes into the Authorization header as typed, and a token without "Bearer " before it is refused (401). Needed only when sdnlb runs with --api-token: then on every write, and on reads too with --auth-reads. Without a token configured, send none: every operation works without it.
