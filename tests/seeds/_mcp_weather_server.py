"""A one-tool MCP server (official SDK's FastMCP), run as a subprocess by seed 003's MCP
tests."""

from mcp.server.fastmcp import FastMCP

server = FastMCP("weather")


@server.tool()
def get_weather(city: str) -> str:
    """Get the weather for a city."""
    return f"It's sunny in {city}."


if __name__ == "__main__":
    server.run()
