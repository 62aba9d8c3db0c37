-- pandoc filter for scripts/man: a table becomes a list of its rows, each row's first cell the
-- term and the other cells "header: text" lines under it (man pages are 80 columns wide;
-- the reference's tables are not).
local function inlines(blocks)
  local out = pandoc.List()
  for _, block in ipairs(blocks) do
    if block.content then out:extend(block.content) end
  end
  return out
end

function Table(tbl)
  local simple = pandoc.utils.to_simple_table(tbl)
  local items = pandoc.List()
  for _, row in ipairs(simple.rows) do
    local lines = pandoc.List()
    for i = 2, #row do
      local text = inlines(row[i])
      if #text > 0 then
        local line = pandoc.List({ pandoc.Emph(inlines(simple.headers[i])), pandoc.Str(":"), pandoc.Space() })
        line:extend(text)
        lines:insert(pandoc.Para(line))
      end
    end
    items:insert({ inlines(row[1]), { lines } })
  end
  return pandoc.DefinitionList(items)
end
