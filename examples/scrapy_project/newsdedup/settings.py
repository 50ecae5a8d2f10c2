"""Settings of the example project: Scrapy's defaults, plus neardup's add-on."""

BOT_NAME = "newsdedup"
SPIDER_MODULES = ["newsdedup.spiders"]
NEWSPIDER_MODULE = "newsdedup.spiders"
ROBOTSTXT_OBEY = True

# neardup: keep each story once. These two lines are all it takes; the add-on installs its
# item pipeline, and the NEARDUP_* settings (see the README) tune it.
ADDONS = {"neardup.scrapy.NearDupAddon": 100}
NEARDUP_HTML_FIELD = "html"  # compare the main text of each page, not its menus and footers

# what the feed keeps of each item (not the page's HTML)
FEED_EXPORT_FIELDS = ["url", "title", "neardup_duplicate_of", "neardup_extends", "neardup_score"]
FEED_EXPORT_ENCODING = "utf-8"
