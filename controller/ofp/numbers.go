package ofp

// EtherTypes the controller's matches and frames name (IEEE 802 numbers).
const (
	EthTypeIPv4 uint16 = 0x0800
	EthTypeARP  uint16 = 0x0806
	EthTypeIPv6 uint16 = 0x86dd
	EthTypeLLDP uint16 = 0x88cc
)

// IP protocol numbers (IANA) the controller's matches and frames name.
const (
	IPProtoICMP   uint8 = 1
	IPProtoTCP    uint8 = 6
	IPProtoUDP    uint8 = 17
	IPProtoICMPv6 uint8 = 58
)
