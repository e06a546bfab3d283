"""Golden-output pins: the exact output of every plantrail command and MCP tool, compared with files kept here."""
