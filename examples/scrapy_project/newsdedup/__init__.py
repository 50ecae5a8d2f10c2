"""An example Scrapy project that keeps each news story once with neardup's add-on."""
