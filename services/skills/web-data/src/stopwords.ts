/** English function words left out of keyword counts. */
export const ENGLISH_STOPWORDS: ReadonlySet<string> = new Set(
  `a about above across after afterwards again against all almost alone along already also although always am among amongst an and another any
anybody anyhow anyone anything anyway anywhere are around as at back be became because become becomes becoming been before beforehand behind
being below beside besides between beyond both but by can cannot could did do does doing done down during each either else elsewhere enough
etc even ever every everyone everything everywhere except few for former formerly from further get gets got had has have having he hence her
here hereafter hereby herein hers herself him himself his how however i if in indeed instead into is it its itself just last latter least less
let like made make many may me meanwhile might mine more moreover most mostly much must my myself namely neither never nevertheless new next no
nobody none noone nor not nothing now nowhere of off often on once one only onto or other others otherwise our ours ourselves out over own per
perhaps please put rather re said same say says see seem seemed seeming seems several she should since so some somehow someone something
sometime sometimes somewhere still such than that the their theirs them themselves then thence there thereafter thereby therefore therein
thereupon these they this those though through throughout thru thus to together too toward towards under until up upon us very via was we well
were what whatever when whence whenever where whereafter whereas whereby wherein whereupon wherever whether which while whither who whoever
whole whom whose why will with within without would yet you your yours yourself yourselves s t don didn doesn isn wasn weren won wouldn couldn
shouldn ll ve re d m also told two three`
    .split(/\s+/)
    .filter((word) => word !== ''),
);
